"""Forms for the gallery's pages: browsing filters and content settings."""

from __future__ import annotations

from django import forms

from gallery.selectors import DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE, MAX_QUERY_LENGTH, Sort
from worlds.categories import Category


class BrowseForm(forms.Form):
    """The query string of a gallery list: sort, tags, search words, a cursor and a page size."""

    sort = forms.ChoiceField(choices=[(sort.value, sort.value.title()) for sort in Sort], required=False)
    tag = forms.CharField(max_length=40, required=False)
    q = forms.CharField(max_length=MAX_QUERY_LENGTH, required=False, label="Search")
    category = forms.ChoiceField(choices=[("", "All categories"), *Category.choices], required=False)
    cursor = forms.CharField(max_length=400, required=False)
    size = forms.IntegerField(min_value=1, max_value=MAX_PAGE_SIZE, required=False)

    def values(self, request_tags: list[str]) -> dict[str, object]:
        data = self.cleaned_data
        return {
            "sort": Sort(data.get("sort") or Sort.TRENDING),
            "tags": [tag for tag in request_tags if tag][:5],
            "cursor": data.get("cursor") or None,
            "size": data.get("size") or DEFAULT_PAGE_SIZE,
        }


class ContentSettingsForm(forms.Form):
    show_mature = forms.BooleanField(required=False, label="Show works rated Mature")
    adult_confirmed = forms.BooleanField(required=False, label="I confirm that I am 18 or older")

    def clean(self) -> dict[str, object]:
        data = super().clean()
        if data.get("show_mature") and not data.get("adult_confirmed"):
            self.add_error(
                "adult_confirmed", "Mature works are shown only to adults: confirm your age to turn them on."
            )
        return data
