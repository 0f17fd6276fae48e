"""The example plugin's tests (a package, so its test_contract module does not clash with the core's tests/test_contract.py when both are collected in one pytest run)."""
