"""The leaks lens's pure code: no Django, plain data in and out."""
