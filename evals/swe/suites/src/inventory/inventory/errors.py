class InventoryError(Exception):
    """Base class for every error this package raises."""


class UnknownItem(InventoryError, KeyError):
    def __init__(self, sku):
        super().__init__(sku)
        self.sku = sku

    def __str__(self):
        return f"unknown item {self.sku!r}"


class InsufficientStock(InventoryError):
    def __init__(self, sku, wanted, available):
        super().__init__(f"cannot take {wanted} of {sku!r}: only {available} in stock")
        self.sku = sku
        self.wanted = wanted
        self.available = available
