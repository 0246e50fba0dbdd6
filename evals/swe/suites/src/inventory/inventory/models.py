from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal


@dataclass(frozen=True)
class Item:
    sku: str
    name: str
    unit_cost: Decimal
    tags: tuple = ()

    def __post_init__(self):
        if not self.sku or not self.sku.strip():
            raise ValueError("sku must not be empty")
        if self.unit_cost < 0:
            raise ValueError("unit_cost must not be negative")


@dataclass(frozen=True)
class Movement:
    sku: str
    quantity: int  # positive: received, negative: shipped
    day: date
    note: str = ""


@dataclass
class Stock:
    item: Item
    quantity: int = 0
    history: list = field(default_factory=list)

    @property
    def value(self) -> Decimal:
        return self.item.unit_cost * self.quantity
