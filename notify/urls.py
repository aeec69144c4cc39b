from django.urls import path

from . import feed

urlpatterns = [path("atom", feed.atom, name="notify_feed")]
