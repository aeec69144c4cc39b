from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from memory_site.health import health

urlpatterns = [
    path("health", health, name="health"),
    path("admin/", admin.site.urls),
    path("api/v1/", include("mcp_bridge.api.urls")),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("feed/", include("notify.urls")),  # notify: the reviewer's secret Atom feed
    path("", include("inbox.urls")),
]
