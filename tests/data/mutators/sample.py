"""A small module for the cctest mutate CLI tests."""


def add(a, b, /, *rest):
    res = a + b
    count = 0
    for x in rest:
        count += 1
        res = res + x
    if res > 10 and count:
        return res
    return -res
