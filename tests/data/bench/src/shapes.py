"""A small module for the source-tree loader's tests."""


def area(width, height):
    """The area of a rectangle."""
    if width < 0 or height < 0:
        raise ValueError("negative side")
    result = width * height
    return result


def short(x):
    return x + 1


class Polygon:
    def __init__(self, points):
        self.points = list(points)

    def perimeter(self):
        total = 0.0
        n = len(self.points)
        for i in range(n):
            (x1, y1), (x2, y2) = self.points[i], self.points[(i + 1) % n]
            total += ((x2 - x1) ** 2 + (y2 - y1) ** 2) ** 0.5
        return total
