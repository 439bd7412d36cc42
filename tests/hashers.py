"""Django's PBKDF2 hasher at one round, for the tests: the same algorithm and hash format (a
server process on the production settings checks these passwords as it checks its own), without
the 1.5 million rounds that made each user a test creates cost most of a second."""

from __future__ import annotations

from django.contrib.auth.hashers import PBKDF2PasswordHasher


class OneRoundPBKDF2PasswordHasher(PBKDF2PasswordHasher):
    iterations = 1
