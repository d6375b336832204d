"""Forms for reports, moderators' decisions and creators' appeals."""

from __future__ import annotations

from django import forms

from moderation.models import QueueKind, ReportReason, ReportSubject, Verdict
from worlds.categories import Category
from worlds.models import ContentRating


class ReportForm(forms.Form):
    subject = forms.ChoiceField(choices=ReportSubject.choices, label="What are you reporting?")
    character_name = forms.CharField(max_length=100, required=False, label="Which character (if a character)")
    reason = forms.ChoiceField(choices=ReportReason.choices)
    note = forms.CharField(
        max_length=2000,
        required=False,
        widget=forms.Textarea(attrs={"rows": 4}),
        label="Anything moderators should know (optional)",
    )


class ReasonForm(forms.Form):
    reason = forms.CharField(
        max_length=2000, widget=forms.Textarea(attrs={"rows": 3}), help_text="The person affected reads this."
    )


class OptionalReasonForm(forms.Form):
    reason = forms.CharField(max_length=2000, required=False, widget=forms.Textarea(attrs={"rows": 2}))


class AppealForm(forms.Form):
    statement = forms.CharField(
        max_length=2000, widget=forms.Textarea(attrs={"rows": 4}), label="Why should this decision change?"
    )


class QueueFilterForm(forms.Form):
    kind = forms.ChoiceField(choices=[("", "Everything"), *QueueKind.choices], required=False)
    category = forms.ChoiceField(choices=[("", "All categories"), *Category.choices], required=False)
    rating = forms.ChoiceField(choices=[("", "All ratings"), *ContentRating.choices], required=False)
    verdict = forms.ChoiceField(
        choices=[("", "Any verdict"), *Verdict.choices], required=False, label="Automated verdict"
    )
