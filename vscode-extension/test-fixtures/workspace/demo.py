"""A small module that the end-to-end test opens and types into."""


def scale(values, factor):
    return [v * factor for v in values]
