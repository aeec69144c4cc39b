import sys

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from memory_site.defaults import DEFAULT_PORT
from memory_site.files import serve_lock_path


class Command(BaseCommand):
    help = (
        "Run Vetted: one ASGI process (uvicorn) serving the site, with the embedding model loaded once "
        "and kept warm. Binds to 127.0.0.1 unless told otherwise."
    )

    def add_arguments(self, parser):
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=DEFAULT_PORT)

    def handle(self, *args, **opts):
        import uvicorn

        from retrieval import index
        from retrieval.embeddings import get_embedder

        host, port = opts["host"], opts["port"]
        if not 1 <= port <= 65535:
            raise CommandError(f"--port {port}: use 1-65535.")
        bare_host = host.strip("[]")
        if (
            bare_host not in settings.ALLOWED_HOSTS
            and "*" not in settings.ALLOWED_HOSTS
            and bare_host not in ("0.0.0.0", "::")
        ):
            self.stderr.write(
                f"Note: {host} is not in VETTED_ALLOWED_HOSTS ({', '.join(settings.ALLOWED_HOSTS)}); "
                "requests naming it will be refused."
            )
        # Load the model now, not on the first search, and catch up on any
        # records changed while the server was down (e.g. by an import).
        embedder = get_embedder()
        try:
            stats = index.sync(embedder)
        except index.IndexModelMismatch as exc:
            raise CommandError(str(exc)) from None
        if stats.records:
            self.stderr.write(f"Index: embedded {stats.records} changed record(s) at startup.")
        report = index.check()
        if not report.ok:
            self.stderr.write(
                "Index problems (run `python manage.py check_index` for details, "
                "`python manage.py reindex` to rebuild):"
            )
            for problem in report.problems:
                self.stderr.write(f"  {problem}")
        self._hold_serve_lock()
        # Hashed, compressed static files: collected when missing or older
        # than the sources (a few seconds, once per change).
        from memory_site.static_files import StaticFilesStale, ensure_collected

        try:
            if ensure_collected():
                self.stderr.write(f"Static files collected into {settings.STATIC_ROOT}.")
        except StaticFilesStale as exc:
            raise CommandError(str(exc)) from None
        self.stderr.write(f"Vetted on http://{host}:{port}/ (model {embedder.name}); Ctrl-C stops it.")
        self._announce_first_run(host, port)
        # notify: the outbox sender runs beside the site, in a thread of its own.
        from notify import sender

        sender.start_thread()
        from memory_site.asgi import application

        # X-Forwarded-For/-Proto are believed only when an operator said a
        # proxy sits in front (VETTED_BEHIND_PROXY); uvicorn's default would
        # trust them from any loopback client, e.g. a local agent.
        uvicorn.run(
            application,
            host=host,
            port=port,
            log_level="info",
            lifespan="on",
            access_log=True,
            server_header=False,
            proxy_headers=settings.VETTED_BEHIND_PROXY,
        )
        sys.stderr.flush()

    def _announce_first_run(self, host: str, port: int) -> None:
        """Until the reviewer account exists, /setup/ takes the one-time code
        from VETTED_HOME/setup-code (reviews/setup_code.py): make it and say where."""
        from django.contrib.auth import get_user_model

        from reviews import setup_code

        if get_user_model().objects.exists():
            setup_code.discard()
            return
        code = setup_code.ensure()
        self.stderr.write(setup_code.first_run_notice(host, port, code, console=self.stderr.isatty()))

    def _hold_serve_lock(self):
        """A shared lock on <database>.serve-lock for the life of the process, so
        `restore` can tell for certain that a server has the database open
        (servers share it; restore needs it exclusively)."""
        try:
            import fcntl
        except ImportError:  # not POSIX: restore falls back to asking /health
            return
        path = serve_lock_path()
        handle = open(path, "a")  # noqa: SIM115 - held open (and locked) for the life of the process
        fcntl.flock(handle, fcntl.LOCK_SH)
        self._serve_lock = handle  # kept open (and locked) until the process ends
