"""``cctest defects list | show ID | export``: read the defect log the language server writes.

``list`` and ``show`` print a model's completions and an editor's text: on a terminal their control
characters are shown as ``\\xNN`` escapes (``for_stream``); to a pipe, and with ``--json``, exactly."""

from __future__ import annotations

import argparse
import json
import os
import sys

from ..errors import InputError
from ..safe_text import for_stream

NOTHING_LOGGED = (
    "no defect log at {path} yet: the language server creates it when it records its first "
    "suspected defect (`cctest complete` never writes it)."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--db",
        default=None,
        help="the defect log (default: the language server's, under the user cache directory)",
    )
    sub = p.add_subparsers(dest="action", metavar="ACTION", parser_class=type(p))
    sub.required = True
    ls = sub.add_parser(
        "list", help="one line per record, newest first", description="One line per record, newest first."
    )
    ls.add_argument("--limit", type=int, default=50, help="how many records (default 50)")
    ls.add_argument("--offset", type=int, default=0, help="skip this many of the newest records")
    ls.add_argument("--uri", default=None, help="only records from this document URI")
    ls.add_argument("--since", default=None, help="only records at or after this ISO 8601 time")
    ls.add_argument("--json", action="store_true", help="print the records as JSON lines")
    show = sub.add_parser("show", help="one record in full", description="One record in full.")
    show.add_argument("id", type=int, help="the record id (see `cctest defects list`)")
    show.add_argument("--json", action="store_true", help="print the record as JSON")
    ex = sub.add_parser(
        "export", help="every record as JSON lines or CSV", description="Every record as JSON lines or CSV."
    )
    ex.add_argument("--format", choices=("jsonl", "csv"), default="jsonl")
    ex.add_argument("--output", "-o", default=None, help="write to this file (default: standard output)")
    for q in (ls, show, ex):  # accept --db after the action too
        q.add_argument("--db", default=argparse.SUPPRESS, help=argparse.SUPPRESS)


def _one_line(text: str, width: int) -> str:
    line = " ⏎ ".join(x for x in text.strip().splitlines() if x.strip())
    return line if len(line) <= width else line[: width - 1] + "…"


def run(args: argparse.Namespace) -> int:
    from ..config import Settings
    from ..defects import DefectStore, log_path

    if args.action == "list" and (args.limit < 1 or args.offset < 0):
        raise InputError("--limit must be at least 1 and --offset at least 0.")
    path = log_path(args.db or Settings().defect_log_path())
    # nothing logged yet: an empty log, not an error (a link, even a dangling one, is refused below)
    if not os.path.lexists(path) and args.action != "show":
        unwritten = f" {args.output} was not written." if args.action == "export" and args.output else ""
        print(f"# {NOTHING_LOGGED.format(path=path)}{unwritten}", file=sys.stderr)
        return 0

    def say(line: str) -> None:
        print(for_stream(line, sys.stdout))

    with DefectStore(path, create=False) as store:
        if args.action == "list":
            records, total = store.list(limit=args.limit, offset=args.offset, uri=args.uri, since=args.since)
            if args.json:
                for r in records:
                    print(json.dumps(r.to_dict(), ensure_ascii=False))
                return 0
            for r in records:
                where = f"{r.uri or '?'}:{(r.line or 0) + 1}:{(r.col or 0) + 1}"
                flags = ("suspect" if r.suspect else "logged") + (" · accepted" if r.accepted else "")
                outl = f"{len(r.outliers)}/{len(r.completions)} outliers"
                text = _one_line(r.chosen_completion, 50)
                say(f"{r.id:>6}  {r.time[:19]}  {where}  {outl}  {flags}  {text}")
            print(f"# {len(records)} of {total} records in {path}", file=sys.stderr)
            return 0
        if args.action == "show":
            rec = store.get(args.id)
            if rec is None:
                raise InputError(
                    f"there is no record {args.id} in {path}; `cctest defects list` shows the ids."
                )
            if args.json:
                print(json.dumps(rec.to_dict(), ensure_ascii=False, indent=2))
                return 0
            where = f"{rec.uri}:{(rec.line or 0) + 1}:{(rec.col or 0) + 1}"
            say(f"record {rec.id} · {rec.time} · {where} · mode {rec.mode}")
            say(f"model: {rec.model} · request {rec.request_id}")
            say(
                f"outliers: {rec.outliers} of {len(rec.completions)} completions · chosen: {rec.chosen}"
                f" · accepted: {'yes, ' + str(rec.accepted_time) if rec.accepted else 'no'}"
            )
            say("--- prompt (last 10 lines) ---")
            say("\n".join(rec.prompt.splitlines()[-10:]))
            say("--- original completion ---")
            say(rec.original_completion.rstrip("\n"))
            say("--- chosen completion ---")
            say(rec.chosen_completion.rstrip("\n"))
            say("--- every completion ---")
            for i, c in enumerate(rec.completions):
                mark = "*" if i in rec.outliers else " "
                say(f"{mark}{i:>2} {c.get('source', '?'):<22} {_one_line(c.get('text', ''), 70)}")
            return 0
        # export
        if args.output:
            n = store.export_to(args.output, args.format)
            print(f"# {n} records written to {args.output}", file=sys.stderr)
        else:
            store.export(sys.stdout, args.format)
        return 0
