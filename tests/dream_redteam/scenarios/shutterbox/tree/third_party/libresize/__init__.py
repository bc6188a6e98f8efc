"""Vendored libresize 2.3."""
