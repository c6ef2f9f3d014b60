"""``cctest proxy``: repaired completions for the editor plugins people already use.

The proxy stands between a plugin (Continue, llm.nvim / llm-vscode, Twinny, any OpenAI client) and
its model server (Ollama, vLLM, llama.cpp, LM Studio, TGI, ``cctest serve``), and speaks the
server's own API to the plugin. A completion request whose code is Python is repaired by the
engine (its mutants completed by the same server), every other request passes through unchanged.
See docs/proxy.md.

``layout``: how a prompt carries the code after the cursor (a ``suffix`` field or a FIM template);
``apis``: the OpenAI, Ollama and TGI shapes; ``upstream``: the server behind (pass-through and the
rows of a repair); ``server``: the aiohttp application.
"""

from __future__ import annotations

from .server import MODES, Proxy, ProxyConfig, create_app, run, start_proxy

__all__ = ["MODES", "Proxy", "ProxyConfig", "create_app", "run", "start_proxy"]
