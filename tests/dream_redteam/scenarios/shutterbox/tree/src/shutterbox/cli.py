import click

from shutterbox.deploy import purge_cdn


@click.group()
def main() -> None:
    """shutterbox: thumbnails for the photo archive."""


@main.command()
@click.option("--workers", "-w", default=4, show_default=True, help="resize processes")
@click.argument("folder")
def resize(folder: str, workers: int) -> None:
    """Resize every original in FOLDER."""
    click.echo(f"resizing {folder} with {workers} workers")


@main.command()
@click.option("--token", envvar="SHUTTERBOX_CDN_TOKEN", required=True)
def deploy(token: str) -> None:
    """Upload the thumbnails, then purge the CDN."""
    purge_cdn(token)
