"""A small stock ledger: items, movements, valuation and reports."""

from inventory.errors import InsufficientStock, InventoryError, UnknownItem
from inventory.ledger import Ledger
from inventory.models import Item, Movement

__all__ = ["Item", "Movement", "Ledger", "InventoryError", "InsufficientStock", "UnknownItem"]
__version__ = "0.4.1"
