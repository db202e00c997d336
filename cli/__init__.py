"""The graphrelease command-line interface: a thin Typer shell over the library."""
