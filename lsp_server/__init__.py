"""The cctest language server: repaired completions for any LSP client (see ``lsp_server.server``)."""
