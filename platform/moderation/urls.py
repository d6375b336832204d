from __future__ import annotations

from django.urls import path, re_path

from moderation import views

app_name = "moderation"
urlpatterns = [
    path("", views.queue, name="queue"),
    path("report/<slug:slug>/", views.world_report, name="world_report"),
    path("items/<int:item_id>/", views.item, name="item"),
    re_path(
        r"^versions/(?P<version_id>\d+)/(?P<decision>approve|reject)/$", views.version_decide, name="version_decide"
    ),
    re_path(
        r"^worlds/(?P<world_id>\d+)/(?P<action>take-down|restore|feature|unfeature)/$",
        views.world_act,
        name="world_act",
    ),
    re_path(r"^people/(?P<user_id>\d+)/(?P<action>warn|suspend|reinstate)/$", views.user_act, name="user_act"),
    path("reports/<int:report_id>/dismiss/", views.report_dismiss, name="report_dismiss"),
    re_path(r"^appeals/(?P<appeal_id>\d+)/(?P<decision>grant|deny)/$", views.appeal_decide, name="appeal_decide"),
    path("checks/<int:check_id>/image", views.check_image, name="check_image"),
    path("audit/", views.audit_log, name="audit"),
    path("blocked-outputs/", views.blocked_outputs, name="blocked_outputs"),
    path("submissions/", views.submissions, name="submissions"),
    path("submissions/decisions/<int:decision_id>/appeal/", views.appeal_file, name="appeal_file"),
]
