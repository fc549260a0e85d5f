"""Families of the tests' own, each a folder as runner/families/NAME is (tests/test_families.py)."""
