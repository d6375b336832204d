from __future__ import annotations

from django.urls import path

from worlds import views

app_name = "worlds"
urlpatterns = [
    path("", views.studio, name="studio"),
    path("import/", views.import_content, name="import"),
    path("worlds/new/", views.world_edit, name="world_create"),
    path("worlds/<int:world_id>/", views.world_edit, name="world"),
    path("worlds/<int:world_id>/preview.jpg", views.world_preview, name="world_preview"),
    path("worlds/<int:world_id>/thumbnail", views.world_thumbnail, name="world_thumbnail"),
    path("worlds/<int:world_id>/publish/", views.publish, name="publish"),
    path("worlds/<int:world_id>/hooks/new/", views.hook_edit, name="hook_create"),
    path("worlds/<int:world_id>/stories/new/", views.story_edit, name="story_create"),
    path("hooks/<int:hook_id>/", views.hook_edit, name="hook"),
    path("stories/<int:story_id>/", views.story_edit, name="story"),
    path("characters/new/", views.character_edit, name="character_create"),
    path("characters/<int:character_id>/", views.character_edit, name="character"),
    path("lorebooks/new/", views.lorebook_edit, name="lorebook_create"),
    path("lorebooks/<int:lorebook_id>/", views.lorebook_edit, name="lorebook"),
    path("versions/<int:version_id>/", views.version_detail, name="version"),
    path("versions/<int:version_id>/remix/", views.remix, name="remix"),
]
