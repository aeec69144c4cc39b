from django.urls import path

from . import views

urlpatterns = [
    path("", views.home, name="home"),
    path("setup/", views.first_run, name="first_run"),
]
