"""The one form of the memory pages: a memory's words, added or edited."""

from __future__ import annotations

from django import forms

from memories.models import MEMORY_TEXT_MAX


class MemoryTextForm(forms.Form):
    text = forms.CharField(max_length=MEMORY_TEXT_MAX, widget=forms.Textarea(attrs={"rows": 2}), label="Memory")
