from datetime import date
from decimal import Decimal

import pytest

from inventory import InsufficientStock, Item, Ledger, UnknownItem

D = date(2024, 3, 1)


@pytest.fixture
def ledger():
    led = Ledger()
    led.add_item(Item("A-1", "bolt", Decimal("0.25")))
    led.add_item(Item("B-2", "nut", Decimal("0.10")))
    return led


def test_receive_and_ship(ledger):
    ledger.receive("A-1", 100, D)
    ledger.ship("A-1", 30, D)
    assert ledger.quantity("A-1") == 70


def test_cannot_ship_more_than_in_stock(ledger):
    ledger.receive("A-1", 5, D)
    with pytest.raises(InsufficientStock) as err:
        ledger.ship("A-1", 6, D)
    assert err.value.available == 5


def test_unknown_item(ledger):
    with pytest.raises(UnknownItem):
        ledger.quantity("Z-9")


def test_total_value(ledger):
    ledger.receive("A-1", 10, D)
    ledger.receive("B-2", 3, D)
    assert ledger.total_value() == Decimal("2.80")


def test_movements_sorted_by_day(ledger):
    ledger.receive("A-1", 1, date(2024, 3, 5))
    ledger.receive("B-2", 1, date(2024, 3, 2))
    assert [m.sku for m in ledger.movements()] == ["B-2", "A-1"]
