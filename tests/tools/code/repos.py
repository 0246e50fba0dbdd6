"""Small repositories the code tests build: a shop with a few modules, tests and a configuration file."""

from __future__ import annotations

import subprocess
from pathlib import Path

SHOP = {
    "shop/__init__.py": "from shop.pricing import Cart\n",
    "shop/pricing.py": (
        "from shop.util import clamp\n"
        "\n"
        "\n"
        "class Cart:\n"
        '    """A shopping cart that totals its items."""\n'
        "\n"
        "    def total(self, items):\n"
        "        return sum(item.price for item in items)\n"
        "\n"
        "    def apply_discount(self, total, rate):\n"
        '        """Apply a discount rate to a total."""\n'
        "        return clamp(total * (1 - rate), 0, total)\n"
    ),
    "shop/util.py": "def clamp(x, lo, hi):\n    return max(lo, min(x, hi))\n\n\ndef parse_money(text):\n    return float(text.strip('$'))\n",
    "shop/shipping.py": (
        "class ShippingRate:\n    def for_weight(self, kilograms):\n        return 5 + 2 * kilograms\n"
    ),
    "tests/test_pricing.py": (
        "from shop.pricing import Cart\n\n\ndef test_apply_discount():\n    assert Cart().apply_discount(100, 0.1) == 90\n"
    ),
    "setup.cfg": "[metadata]\nname = shop\n",
}


def write(root: Path, files: dict[str, str | bytes]) -> Path:
    for path, content in files.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content)
    return root


def git(root: Path, *args: str) -> str:
    run = subprocess.run(
        ["git", "-c", "user.email=t@example.com", "-c", "user.name=t", *args],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    )
    return run.stdout.strip()


def commit_all(root: Path, message: str = "commit") -> str:
    if not (root / ".git").exists():
        git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-q", "--allow-empty", "-m", message)
    return git(root, "rev-parse", "HEAD")


def shop(root: Path) -> Path:
    write(root, SHOP)
    commit_all(root)
    return root


def as_files(files: dict[str, str | bytes]) -> list[tuple[str, bytes]]:
    return [(p, c if isinstance(c, bytes) else c.encode()) for p, c in files.items()]
