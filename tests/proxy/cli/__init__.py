"""Tests for proxy.cli, module by module."""
