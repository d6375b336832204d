"""The moderation API's routes, mounted under /api/moderation/."""

from __future__ import annotations

from django.urls import path

from moderation import apis

urlpatterns = [
    path("reports/", apis.ReportCreateApi.as_view(), name="moderation-report-create"),
    path("reports/<int:report_id>/dismiss/", apis.ReportDismissApi.as_view(), name="moderation-report-dismiss"),
    path("queue/", apis.QueueListApi.as_view(), name="moderation-queue"),
    path("queue/<int:item_id>/", apis.QueueItemDetailApi.as_view(), name="moderation-queue-item"),
    path("versions/<int:version_id>/review/", apis.VersionReviewApi.as_view(), name="moderation-version-review"),
    path("worlds/<int:world_id>/actions/", apis.WorldModerateApi.as_view(), name="moderation-world-actions"),
    path("people/<int:user_id>/actions/", apis.UserModerateApi.as_view(), name="moderation-user-actions"),
    path("appeals/", apis.AppealCreateApi.as_view(), name="moderation-appeal-create"),
    path("appeals/<int:appeal_id>/decision/", apis.AppealDecideApi.as_view(), name="moderation-appeal-decide"),
    path("submissions/", apis.SubmissionListApi.as_view(), name="moderation-submissions"),
    path("audit/", apis.AuditLogApi.as_view(), name="moderation-audit"),
]
