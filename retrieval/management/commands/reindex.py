import sys

from django.core.management.base import BaseCommand
from tqdm import tqdm

from retrieval import index
from retrieval.embeddings import get_embedder


class Command(BaseCommand):
    help = "Rebuild the keyword indexes and every vector with the configured embedding model."

    def handle(self, *args, **opts):
        embedder = get_embedder()
        from django.db import connection

        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM reviews_record")
            total = cursor.fetchone()[0]
        with tqdm(total=total, unit="record", file=sys.stderr, disable=None, desc="reindex") as bar:
            stats = index.reindex(embedder, progress=bar.update)
        self.stdout.write(
            f"Reindexed {stats.records} record(s) with {embedder.name} ({embedder.dimension} dims): "
            f"{stats.embedded} chunk(s) embedded."
        )
