from __future__ import annotations

from django.urls import path

from memories import views

app_name = "memories"
urlpatterns = [
    path("", views.remembered_by, name="remembered_by"),
    path("<int:character_id>/", views.character_memories, name="character"),
    path("<int:character_id>/add/", views.memory_add, name="add"),
    path("<int:character_id>/<int:memory_id>/pin/", views.memory_pin, name="pin"),
    path("<int:character_id>/<int:memory_id>/edit/", views.memory_edit, name="edit"),
    path("<int:character_id>/<int:memory_id>/delete/", views.memory_delete, name="delete"),
]
