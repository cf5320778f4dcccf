"""Command-line interface (typer + rich). Thin: parse, call the engines, render."""
