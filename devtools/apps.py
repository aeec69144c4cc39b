from django.apps import AppConfig


class DevtoolsConfig(AppConfig):
    """Benchmarks, the stress run and the retrieval evaluations: code that
    measures Vetted and is never part of it. Left out of the wheel; the settings
    install it only when it can be imported (a checkout), so ``manage.py
    bench_search`` and the others run from a checkout as before."""

    name = "devtools"
    label = "devtools"
    verbose_name = "Benchmarks and evaluations"
