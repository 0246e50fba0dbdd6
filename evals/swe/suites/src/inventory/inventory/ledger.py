from datetime import date
from decimal import Decimal

from inventory.errors import InsufficientStock, UnknownItem
from inventory.models import Item, Movement, Stock
from inventory.money import round_money


class Ledger:
    """Stock levels per item, changed only through recorded movements."""

    def __init__(self, currency: str = "EUR"):
        self.currency = currency
        self._stock = {}

    def add_item(self, item: Item) -> None:
        if item.sku in self._stock:
            raise ValueError(f"item {item.sku!r} already exists")
        self._stock[item.sku] = Stock(item)

    def item(self, sku: str) -> Item:
        return self._get(sku).item

    def quantity(self, sku: str) -> int:
        return self._get(sku).quantity

    def receive(self, sku: str, quantity: int, day: date, note: str = "") -> Movement:
        if quantity <= 0:
            raise ValueError("quantity received must be positive")
        return self._record(Movement(sku, quantity, day, note))

    def ship(self, sku: str, quantity: int, day: date, note: str = "") -> Movement:
        if quantity <= 0:
            raise ValueError("quantity shipped must be positive")
        stock = self._get(sku)
        if quantity > stock.quantity:
            raise InsufficientStock(sku, quantity, stock.quantity)
        return self._record(Movement(sku, -quantity, day, note))

    def movements(self, sku: str | None = None) -> list:
        if sku is not None:
            return list(self._get(sku).history)
        every = [m for s in self._stock.values() for m in s.history]
        return sorted(every, key=lambda m: m.day)

    def total_value(self) -> Decimal:
        return round_money(sum((s.value for s in self._stock.values()), Decimal(0)))

    def skus(self) -> list:
        return sorted(self._stock)

    def _get(self, sku: str) -> Stock:
        try:
            return self._stock[sku]
        except KeyError:
            raise UnknownItem(sku) from None

    def _record(self, movement: Movement) -> Movement:
        stock = self._get(movement.sku)
        stock.quantity += movement.quantity
        stock.history.append(movement)
        return movement
