from datetime import date
from decimal import Decimal

from inventory import Item, Ledger
from inventory.money import format_money
from inventory.report import page, page_count, render


def test_page_bounds():
    rows = list(range(10))
    assert page(rows, 1, 4) == [0, 1, 2, 3]
    assert page(rows, 3, 4) == [8, 9]
    assert page_count(rows, 4) == 3


def test_format_money_groups_thousands():
    assert format_money(Decimal("1234567.891")) == "1,234,567.89 EUR"
    assert format_money(Decimal("-5")) == "-5.00 EUR"


def test_render_lists_items():
    led = Ledger()
    led.add_item(Item("A-1", "bolt", Decimal("0.25")))
    led.receive("A-1", 8, date(2024, 1, 1))
    out = render(led)
    assert "A-1" in out and "2.00 EUR" in out and "page 1 of 1" in out
