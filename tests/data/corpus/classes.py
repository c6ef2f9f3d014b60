# ruff: noqa
"""Corpus: classes. self, class attributes, properties, augmented assignment on attributes,
inheritance and super(), dataclasses, __slots__, name mangling, class-body names, dunder methods."""

from dataclasses import dataclass, field


class Account:
    interest = 0.5  # a class attribute read through self and through the class
    opened = 0

    def __init__(self, owner, balance=0):
        self.owner = owner
        self.balance = balance
        self.__history = []  # name-mangled: _Account__history
        Account.opened += 1

    def deposit(self, amount):
        if amount <= 0:
            raise ValueError(f"deposit must be positive, got {amount}")
        self.balance += amount
        self.__history.append(("deposit", amount))
        return self.balance

    def withdraw(self, amount, *, allow_overdraft=False):
        if amount > self.balance and not allow_overdraft:
            raise RuntimeError("insufficient funds")
        self.balance -= amount
        self.__history.append(("withdraw", amount))
        return self.balance

    def accrue(self):
        self.balance *= 1 + self.interest
        return self.balance

    @property
    def history(self):
        return list(self.__history)

    @property
    def overdrawn(self):
        return self.balance < 0

    @classmethod
    def count(cls):
        return cls.opened

    @staticmethod
    def fee(amount, rate=0.01):
        return round(amount * rate, 2)

    def __repr__(self):
        return f"Account({self.owner!r}, {self.balance!r})"


class Savings(Account):
    interest = 2

    def accrue(self):
        before = self.balance
        after = super().accrue()
        return after - before


class Temperature:
    def __init__(self, celsius=0.0):
        self._celsius = celsius

    @property
    def fahrenheit(self):
        return self._celsius * 9 / 5 + 32

    @fahrenheit.setter
    def fahrenheit(self, value):
        self._celsius = (value - 32) * 5 / 9

    def __eq__(self, other):
        if not isinstance(other, Temperature):
            return NotImplemented
        return self._celsius == other._celsius

    def __lt__(self, other):
        return self._celsius < other._celsius

    __hash__ = None


class Vector:
    __slots__ = ("x", "y")

    def __init__(self, x, y):
        self.x = x
        self.y = y

    def __add__(self, other):
        return Vector(self.x + other.x, self.y + other.y)

    def __iadd__(self, other):
        # in place: v += w keeps identity, v = v + w does not
        self.x += other.x
        self.y += other.y
        return self

    def __mul__(self, k):
        return Vector(self.x * k, self.y * k)

    def __bool__(self):
        return bool(self.x or self.y)

    def __repr__(self):
        return f"Vector({self.x}, {self.y})"


def translate(v, dv):
    v += dv
    return v


def scaled_sum(vectors, k):
    total = Vector(0, 0)
    for v in vectors:
        total = total + v * k
    return total


class Registry:
    items = []  # shared between instances on purpose

    def register(self, item):
        self.items.append(item)
        return len(self.items)


class Shape:
    sides = 0
    name = "shape"
    label = name.upper()  # class-body names are not locals: renaming them changes attributes

    def describe(self):
        return f"{self.name} with {self.sides} sides"

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls.name = cls.__name__.lower()


class Square(Shape):
    sides = 4


@dataclass
class Inventory:
    name: str
    counts: dict = field(default_factory=dict)
    total: int = 0

    def add(self, item, n=1):
        self.counts[item] = self.counts.get(item, 0) + n
        self.total += n
        return self.counts[item]


class Matrix:
    def __init__(self, rows):
        self.rows = [list(r) for r in rows]

    def __getitem__(self, key):
        i, j = key
        return self.rows[i][j]

    def __setitem__(self, key, value):
        i, j = key
        self.rows[i][j] = value

    def bump_diagonal(self, amount):
        for i in range(min(len(self.rows), len(self.rows[0]))):
            self[i, i] += amount
        return self.rows


# ==== CHECKS (never mutated) ====
from _checks import Checks

checks = Checks()


@checks.case
def account_flow(m):
    a = m.Account("ann", balance=10)
    a.deposit(5)
    a.withdraw(amount=20, allow_overdraft=True)
    return a.balance, a.overdrawn, a.history, a._Account__history, repr(a), m.Account.count()


@checks.case
def account_errors(m):
    a = m.Account("bob")
    try:
        a.deposit(-1)
    except ValueError as e:
        first = str(e)
    return first, a.withdraw(1)


@checks.case
def interest_through_self_and_class(m):
    a = m.Account("c", 4)
    s = m.Savings("d", 4)
    return (
        a.accrue(),
        s.accrue(),
        s.balance,
        m.Account.fee(1234.5),
        m.Account.fee(amount=100, rate=0.5),
        m.Account.opened,
    )


@checks.case
def temperature_property(m):
    t = m.Temperature(100)
    f = t.fahrenheit
    t.fahrenheit = -40
    return (
        f,
        t._celsius,
        t == m.Temperature(-40.0),
        t == 5,
        t < m.Temperature(0),
        sorted([m.Temperature(3), t])[0]._celsius,
    )


@checks.case
def vector_iadd_identity(m):
    v = m.Vector(1, 2)
    alias = v
    result = m.translate(v, m.Vector(10, 20))
    return (
        result is alias,
        repr(alias),
        repr(m.scaled_sum([m.Vector(1, 1), m.Vector(2, -1)], 3)),
        bool(m.Vector(0, 0)),
    )


@checks.case
def tuple_translate(m):
    t = (1, 2)
    return m.translate(t, (3,)), t


@checks.case
def shared_class_list(m):
    r1, r2 = m.Registry(), m.Registry()
    r1.register("a")
    return r2.register("b"), m.Registry.items


@checks.case
def class_body_names(m):
    return (
        m.Shape().describe(),
        m.Square().describe(),
        m.Shape.label,
        sorted(k for k in vars(m.Shape) if not k.startswith("__")),
    )


@checks.case
def dataclass_behaviour(m):
    inv = m.Inventory("shop")
    inv.add("apple")
    inv.add(item="apple", n=3)
    inv.add("pear", 2)
    return inv.counts, inv.total, inv == m.Inventory("shop", {"apple": 4, "pear": 2}, 6), repr(inv)


@checks.case
def subscript_augassign(m):
    mat = m.Matrix([[1, 2], [3, 4], [5, 6]])
    return mat.bump_diagonal(10), mat[1, 1]
