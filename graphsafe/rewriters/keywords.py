"""Keyword rewrites: add or replace `name=value` in a call, keeping the call's own layout."""

from __future__ import annotations

import libcst as cst


def with_keyword(call: cst.Call, name: str, value: str) -> cst.Call:
    """`call` with `name=value` set: replaced if present, else appended after the last argument."""
    new_value = cst.parse_expression(value)
    args = list(call.args)
    for i, arg in enumerate(args):
        if arg.keyword is not None and arg.keyword.value == name:
            args[i] = arg.with_changes(value=new_value)
            return call.with_changes(args=args)
    keyword = cst.Arg(
        value=new_value,
        keyword=cst.Name(name),
        equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")),
    )
    if args:
        last = args[-1]
        # Separate ours from the last argument the way the call separates its arguments
        # (one space, or a newline plus indentation in a one-per-line call).
        separator = cst.SimpleWhitespace(" ")
        if len(args) >= 2 and isinstance(args[-2].comma, cst.Comma):
            separator = args[-2].comma.whitespace_after
        elif isinstance(call.whitespace_before_args, cst.ParenthesizedWhitespace):
            separator = call.whitespace_before_args
        if isinstance(last.comma, cst.Comma):  # trailing comma: keep it last
            args[-1] = last.with_changes(comma=cst.Comma(whitespace_after=separator))
            args.append(keyword.with_changes(comma=last.comma))
        else:
            args[-1] = last.with_changes(
                comma=cst.Comma(whitespace_after=separator), whitespace_after_arg=cst.SimpleWhitespace("")
            )
            args.append(keyword.with_changes(whitespace_after_arg=last.whitespace_after_arg))
    else:
        args.append(keyword)
    return call.with_changes(args=args)


def keyword_fix(ctx, call: cst.Call, name: str, value: str, statement: cst.CSTNode | None = None) -> tuple[cst.CSTNode, str]:
    """A (node, replacement code) pair for a fix that sets `name=value` on `call`.

    `statement` is the statement holding the call when the fix is built after the walk has
    moved on (its indentation is kept for a multi-line call)."""
    return (call, ctx.code_for(with_keyword(call, name, value), at=statement or call))
