"""Her household: a fridge that meals use up and groceries refill, a laundry basket, plants to water (pure).

Chores come from this state, not from a dice roll: she goes to the market when the fridge is nearly empty,
does the laundry when the basket is full, waters the plants every few days.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from engine.life.localtime import date_of

PANTRY_FULL = 8.0        # home meals' worth of food after a market trip
PANTRY_LOW = 2.5         # below this she needs to shop
BASKET_FULL = 4.0        # days of clothes in the basket before she does a wash
WATER_EVERY_DAYS = 3     # her balcony plants want water this often
# What each kind takes from the fridge (home meals); eating out or at work takes nothing.
_USES_FOOD = {"breakfast": 0.5, "dinner": 1.0, "lunch": 1.0, "cook": 1.0, "bake": 1.0}


@dataclass(frozen=True)
class Household:
    pantry: float = 5.0
    basket: float = 1.0
    watered_day: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"pantry": self.pantry, "basket": self.basket, "watered_day": self.watered_day}

    @classmethod
    def from_dict(cls, raw: dict[str, Any] | None) -> Household:
        if not raw:
            return cls()
        return cls(float(raw["pantry"]), float(raw["basket"]), raw.get("watered_day"))


def needs(house: Household, day: str) -> frozenset[str]:
    """The chores that are due today."""
    due = set()
    if house.pantry < PANTRY_LOW:
        due.add("groceries")
    if house.basket >= BASKET_FULL:
        due.add("laundry")
    if house.watered_day is None or (date_of(day) - date_of(house.watered_day)).days >= WATER_EVERY_DAYS:
        due.add("plants")
    return frozenset(due)


def new_day(house: Household) -> Household:
    """A day's clothes go in the basket."""
    return replace(house, basket=house.basket + 1.0)


def after(house: Household, kind: str, day: str, *, at_home: bool) -> Household:
    """The household after she finished `kind` on `day` (at home or not: a meal out takes nothing)."""
    if kind == "groceries":
        return replace(house, pantry=PANTRY_FULL)
    if kind == "laundry":
        return replace(house, basket=0.0)
    if kind == "plants":
        return replace(house, watered_day=day)
    if kind in _USES_FOOD and at_home:
        return replace(house, pantry=max(0.0, house.pantry - _USES_FOOD[kind]))
    return house


def eats_out(house: Household) -> bool:
    """An empty fridge sends her out to eat."""
    return house.pantry < 1.0
