# ruff: noqa
"""Corpus: a module that shadows builtins (print, bool, len, str) and already uses the generic fresh
names a mutator might invent (Param1, LocalVar1, TempVar, ...) as globals. A mutant that inserts
print(...) calls this module's print; one that introduces a name already taken changes what it means."""

OUTPUT = []

Param1 = "global Param1"
Param2 = "global Param2"
LocalVar1 = "global LocalVar1"
LocalVar2 = "global LocalVar2"
TempVar = "global TempVar"
Add_TempVar = "global Add_TempVar"
Add_Param_b = "global Add_Param_b"
Param_a = "global Param_a"
Var1 = "global Var1"
tmp = "global tmp"


def print(*args, **kwargs):
    # records instead of writing: any extra call is visible in OUTPUT
    OUTPUT.append(" ".join(map(repr, args)))


def bool(x):
    return "shadowed bool"


def len(x):
    return -1


def str(x):
    return "<str>"


def report(value):
    print("value", value)
    return OUTPUT[-1]


def uses_shadowed_len(items):
    n = len(items)
    return n


def uses_globals(a, b):
    # Param1 / LocalVar1 / TempVar here are the module's globals
    result = a + b
    return result, Param1, LocalVar1, TempVar, Add_TempVar, Add_Param_b


def uses_more_globals(x):
    y = x * 2
    return y, Param2, LocalVar2, Param_a, Var1, tmp


def condition_with_shadowed_bool(flag):
    if flag:
        return "truthy"
    return "falsy"


def add(a, b):
    res = a + b
    return res, Add_Param_b


def compare(a, b):
    res = a > b
    return res, LocalVar1


def accumulate(a, b):
    a += b
    return a, OUTPUT[:]


# ==== CHECKS (never mutated) ====
from _checks import Checks

checks = Checks()


@checks.case
def shadowed_print(m):
    return m.report(5), m.report(value=[1]), list(m.OUTPUT)


@checks.case
def shadowed_builtins(m):
    return (
        m.uses_shadowed_len([1, 2]),
        m.str(3),
        m.bool(0),
        m.condition_with_shadowed_bool(0),
        m.condition_with_shadowed_bool("x"),
        list(m.OUTPUT),
    )


@checks.case
def fresh_name_collisions(m):
    return (
        m.uses_globals(1, 2),
        m.uses_more_globals(3),
        m.add(1, b=2),
        m.compare(a=2, b=1),
        m.accumulate([1], [2]),
    )


@checks.case
def output_untouched(m):
    m.uses_globals(1, 2)
    m.add(2, 3)
    m.compare(1, 1)
    m.accumulate(1, 2)
    m.condition_with_shadowed_bool(None)
    return list(m.OUTPUT)
