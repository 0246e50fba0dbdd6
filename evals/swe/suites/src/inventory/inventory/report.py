"""Plain-text stock reports, paginated."""

from inventory.ledger import Ledger
from inventory.money import format_money


def page(rows: list, number: int, size: int) -> list:
    """Rows of page `number` (1-based) when `size` rows fit on a page."""
    if number < 1 or size < 1:
        raise ValueError("page number and size start at 1")
    start = (number - 1) * size
    return rows[start : start + size]


def page_count(rows: list, size: int) -> int:
    if size < 1:
        raise ValueError("page size starts at 1")
    return (len(rows) + size - 1) // size


def stock_rows(ledger: Ledger) -> list:
    rows = []
    for sku in ledger.skus():
        item = ledger.item(sku)
        qty = ledger.quantity(sku)
        rows.append((sku, item.name, qty, format_money(item.unit_cost * qty, ledger.currency)))
    return rows


def render(ledger: Ledger, number: int = 1, size: int = 20) -> str:
    rows = stock_rows(ledger)
    lines = [f"{'SKU':<10} {'NAME':<24} {'QTY':>6} {'VALUE':>16}"]
    for sku, name, qty, value in page(rows, number, size):
        lines.append(f"{sku:<10} {name[:24]:<24} {qty:>6} {value:>16}")
    total = format_money(ledger.total_value(), ledger.currency)
    lines.append(f"page {number} of {max(1, page_count(rows, size))} · total {total}")
    return "\n".join(lines)
