"""What the test modules share: fixtures, builders, fake servers and sample readers; no tests."""
