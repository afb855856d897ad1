"""Benchmarks for ticketproxy's design requirements (run each as ``python -m bench.NAME``)."""
