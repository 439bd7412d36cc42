"""Browser tests use the `browser` and `logged_in_page` fixtures of tests/conftest.py."""
