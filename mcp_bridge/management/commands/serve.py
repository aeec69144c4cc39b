import os
import sys
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import connection
from django.utils.module_loading import import_string

from common import listening
from common.defaults import DEFAULT_PORT
from common.files import serve_lock_path
from dbengine import database_engine


class Command(BaseCommand):
    help = (
        "Run Vetted: one ASGI process (uvicorn) serving the site, with the embedding model loaded once "
        "and kept warm. Binds to 127.0.0.1 unless told otherwise."
    )

    def add_arguments(self, parser):
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=DEFAULT_PORT)
        parser.add_argument(
            "--workers",
            type=int,
            default=1,
            help="Worker processes on this port (default 1). More than one needs PostgreSQL (VETTED_DATABASE_URL).",
        )

    def handle(self, *args, **opts):
        host, port = opts["host"], opts["port"]
        if not 1 <= port <= 65535:
            raise CommandError(f"--port {port}: use 1-65535.")
        workers = opts["workers"]
        if not 1 <= workers <= 64:
            raise CommandError(f"--workers {workers}: use 1-64.")
        if workers > 1 and not database_engine(connection).shared_by_processes:
            # Several processes on one SQLite file would each keep their own
            # rate-limit windows (mcp_bridge/agent_api/limits.py), so an agent
            # would get N times its limit: refuse rather than weaken it.
            raise CommandError(
                f"--workers {workers} needs PostgreSQL: on SQLite one process serves the file and keeps the "
                "per-agent rate limits in its memory. Set VETTED_DATABASE_URL=postgresql://… (docs/postgres.md) "
                "or run with --workers 1."
            )
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
        # Before the model loads (seconds): a second daemon on the same data
        # or the same port would only die later with a raw "Errno 98".
        home = settings.VETTED_HOME
        if self._refuse_if_running(host, port) is None:
            listening.write(home, host=host, port=port, state="starting")
        try:
            self._serve(host, port, workers)
        finally:
            listening.remove(home)  # a clean stop, or a start that failed
        sys.stderr.flush()

    def _serve(self, host: str, port: int, workers: int = 1) -> None:
        from retrieval import index
        from retrieval.embeddings import get_embedder

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
                "Index problems (run `vetted index check` for details, `vetted index rebuild` to rebuild):"
            )
            for problem in report.problems:
                self.stderr.write(f"  {problem}")
        self._hold_serve_lock()
        # Hashed, compressed static files: collected when missing or older
        # than the sources (a few seconds, once per change).
        from common.static_files import StaticFilesStale, ensure_collected

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
        if settings.VETTED_VAULT:  # off unless set: this daemon keeps the vault in step (or waits its turn)
            from portability.vault import daemon as vault_daemon

            vault_daemon.start_thread(Path(settings.VETTED_VAULT), settings.VETTED_VAULT_PERSON)
            self.stderr.write(f"Vault: keeping {settings.VETTED_VAULT} in step for {settings.VETTED_VAULT_PERSON}.")
        from portability.publish import daemon as publish_daemon

        if publish_daemon.start_threads():  # publications remembered with `publish --remember`
            self.stderr.write("Publish: keeping the remembered publications in step.")
        if workers > 1:
            return _serve_workers(host, port, workers)
        # The project's ASGI app by its setting's name: the gateway sits below the
        # wiring (memory_site) and does not import it.
        application = import_string(settings.ASGI_APPLICATION)

        _recording_server(_uvicorn_config(application, host, port)).run()

    def _refuse_if_running(self, host: str, port: int) -> listening.Listening | None:
        """Fail (exit 1) saying where Vetted already runs and how to stop it
        (common/listening.py; `vetted serve` asks the same before Django loads)."""
        try:
            return listening.refuse_if_running(settings.VETTED_HOME, host, port, note=self.stderr.write)
        except listening.AlreadyServing as exc:
            raise CommandError(str(exc)) from None

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


def _serve_workers(host: str, port: int, workers: int) -> None:
    """``workers`` uvicorn processes on one socket (PostgreSQL only, checked
    by the caller). uvicorn starts each worker from an import string, not an
    app object; each builds its own application. This process keeps the
    socket, the serve lock and the notification sender (which takes its turn
    in the database, notify/sender.py); each worker loads the model on its
    first search."""
    from uvicorn.supervisors import Multiprocess

    config = _uvicorn_config("memory_site.asgi:application", host, port, workers=workers)
    sock = config.bind_socket()
    record = listening.read(settings.VETTED_HOME)
    listening.write(
        settings.VETTED_HOME,
        host=host,
        port=port,
        state="listening",
        started=record.started if record is not None else None,
    )
    Multiprocess(config, sockets=[sock]).run()


def _recording_server(config):
    """uvicorn's Server, recording in VETTED_HOME/serve.json that it listens
    once its socket is bound (the record says "starting" until then)."""
    import uvicorn

    class RecordingServer(uvicorn.Server):
        async def startup(self, sockets=None):
            await super().startup(sockets)
            record = listening.read(settings.VETTED_HOME)
            if self.started and record is not None and record.pid == os.getpid():
                listening.write(
                    settings.VETTED_HOME, host=config.host, port=config.port, state="listening", started=record.started
                )

        async def shutdown(self, sockets=None):
            # uvicorn re-raises SIGTERM/SIGINT after shutting down, which ends
            # the process before `finally` blocks run: remove the record here.
            listening.remove(settings.VETTED_HOME)
            await super().shutdown(sockets)

    return RecordingServer(config)


def _uvicorn_config(app, host: str, port: int, **extra):
    """One uvicorn configuration for one process or several workers."""
    import uvicorn

    from mcp_bridge.connections import GuardedH11Protocol

    # X-Forwarded-For/-Proto are believed only when an operator said a
    # proxy sits in front (VETTED_BEHIND_PROXY); uvicorn's default would
    # trust them from any loopback client, e.g. a local agent.
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level="info",
        lifespan="on",
        access_log=True,
        server_header=False,
        proxy_headers=settings.VETTED_BEHIND_PROXY,
        # Slow and excess connections (mcp_bridge/connections.py): uvicorn
        # keeps waiting for headers that never end and accepts every connection.
        http=GuardedH11Protocol,
        timeout_keep_alive=5,
        limit_concurrency=settings.VETTED_MAX_CONNECTIONS,
        h11_max_incomplete_event_size=16 * 1024,
        **extra,
    )
