from django.core.management.base import BaseCommand

from notify import channels, sender


class Command(BaseCommand):
    help = (
        "Send pending notifications from the outbox (what the serve daemon does on its own). "
        "--once: one pass, for cron or a machine without the daemon; else keep going until Ctrl-C."
    )

    def add_arguments(self, parser):
        parser.add_argument("--once", action="store_true", help="one pass, then exit")
        parser.add_argument("--interval", type=float, default=1.0, help="seconds between passes (default 1)")

    def handle(self, *args, **opts):
        if not channels.configured():
            self.stderr.write("No channel is configured (VETTED_WEBHOOK_URL, VETTED_NOTIFY_EMAIL): nothing is sent.")
        if opts["once"]:
            sender.release_dead_claims()
            result = sender.run_once()
            self.stdout.write(
                f"made {len(result.made)} message(s), sent {len(result.sent)}, "
                f"retrying {len(result.retrying)}, failed {len(result.failed)}"
            )
            return
        import threading

        stop = threading.Event()
        try:
            sender.run_forever(stop, interval=opts["interval"])
        except KeyboardInterrupt:
            stop.set()
