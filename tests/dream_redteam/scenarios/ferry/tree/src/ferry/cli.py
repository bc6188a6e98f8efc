import click

from ferry.check import check_manifest
from ferry.config import CHUNK_SIZE_MB, QUEUE_DEPTH
from ferry.upload import upload_all


@click.group()
def main():
    """ferry: sync a folder to an S3 bucket."""


@main.command()
@click.argument("folder")
@click.option("--workers", default=4, show_default=True, help="parallel uploads")
@click.option("--dry-run", is_flag=True, help="list what would be uploaded")
def sync(folder, workers, dry_run):
    """Upload what changed in FOLDER."""
    manifest = check_manifest(folder)  # before anything reaches the bucket
    for done in upload_all(manifest, workers=workers, chunk_mb=CHUNK_SIZE_MB, depth=QUEUE_DEPTH, dry_run=dry_run):
        click.echo(f"uploaded {done}")


@main.command()
@click.argument("folder")
def verify(folder):
    """Re-hash the bucket's objects against the manifest."""
