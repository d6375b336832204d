// The studio's small enhancements. Every page works without them: forms post as plain HTML.
"use strict";

// Errors after a save: move the keyboard and screen readers to the summary that lists them, and let each
// of its links put the cursor in the input it names (a fragment link alone only scrolls there).
function errorSummaryFocus() {
  const summary = document.querySelector("[data-error-summary]");
  if (!summary) return;
  summary.focus();
  summary.addEventListener("click", (event) => {
    const link = event.target.closest("a[href^='#']");
    const target = link && document.getElementById(link.hash.slice(1));
    if (!target) return;
    event.preventDefault();
    const input = target.matches("input, textarea, select") ? target : target.querySelector("input, textarea, select");
    (input || target).focus();
    target.scrollIntoView({ block: "center" });
  });
}

// "Add another …": copy the formset's empty form, numbered like Django expects, and count it.
function formsetsEnable() {
  for (const button of document.querySelectorAll("[data-formset-add]")) {
    const prefix = button.dataset.formsetAdd;
    const total = document.getElementById(`id_${prefix}-TOTAL_FORMS`);
    const template = document.getElementById(`${prefix}-template`);
    const rows = document.getElementById(`${prefix}-rows`);
    button.hidden = false;
    button.addEventListener("click", () => {
      const index = Number(total.value);
      const html = template.innerHTML.replaceAll("__prefix__", index).replaceAll("__number__", index + 1);
      rows.insertAdjacentHTML("beforeend", html);
      total.value = index + 1;
      rows.lastElementChild.querySelector("input:not([type=hidden]), textarea, select")?.focus();
    });
  }
}

// A hook's trigger: show only the inputs its kind reads (the server ignores the others).
function triggerInputsShow() {
  const data = document.getElementById("trigger-inputs");
  const select = document.getElementById("id_trigger");
  if (!data || !select) return;
  const inputsByKind = JSON.parse(data.textContent);
  for (const [kind, names] of Object.entries(inputsByKind)) {
    const fieldset = document.getElementById(`id_${names[0]}`)?.closest("fieldset");
    if (fieldset) fieldset.hidden = kind !== select.value;
  }
}

// Wall colours: show as many colour inputs as the world uses.
function paletteInputsShow() {
  const count = document.getElementById("id_palette_length");
  if (!count) return;
  for (const input of document.querySelectorAll("input[name^=palette_]")) {
    const number = Number(input.name.slice("palette_".length));
    input.closest(".field").hidden = number > Number(count.value);
  }
}

function hexToRgb(hex) {
  return [1, 3, 5].map((start) => parseInt(hex.slice(start, start + 2), 16));
}

// The engine parameters as the form would save them, for the preview.
function engineParameters(form) {
  const value = (name) => form.elements[name].value;
  const palette = [];
  for (let number = 1; number <= Number(value("palette_length")); number += 1) {
    palette.push(hexToRgb(value(`palette_${number}`)));
  }
  return {
    seed: Number(value("seed")),
    size: Number(value("size")),
    palette,
    sky: hexToRgb(value("sky")),
    floor: hexToRgb(value("floor")),
    time_of_day: value("time_of_day"),
    weather: value("weather"),
    fog: form.elements.fog.checked,
  };
}

// The world's first frame follows the engine parameters as they change; a refused spec says why beside it.
function previewFollowInput() {
  const figure = document.querySelector("[data-preview-url]");
  const parameters = document.getElementById("id_engine_parameters");
  if (!figure || !parameters) return;
  const image = figure.querySelector("img");
  const message = figure.querySelector("[data-preview-message]");
  const form = parameters.closest("form");
  let timer = null;
  let latest = 0;
  const refresh = async () => {
    const request = (latest += 1);
    const url = `${figure.dataset.previewUrl}?params=${encodeURIComponent(JSON.stringify(engineParameters(form)))}`;
    try {
      const response = await fetch(url, { credentials: "same-origin" });
      if (request !== latest) return; // a newer request is on its way
      if (!response.ok) {
        message.textContent = `No preview: ${await response.text()}`;
        return;
      }
      const previous = image.src;
      image.src = URL.createObjectURL(await response.blob());
      image.alt = "The first frame with the parameters as they are now";
      if (previous.startsWith("blob:")) URL.revokeObjectURL(previous);
      message.textContent = "";
    } catch (error) {
      message.textContent = "No preview: the server could not be reached.";
    }
  };
  const schedule = () => {
    clearTimeout(timer);
    timer = setTimeout(refresh, 250); // one request once typing pauses, not one per key
  };
  parameters.addEventListener("input", schedule);
  parameters.addEventListener("change", schedule);
}

document.addEventListener("DOMContentLoaded", () => {
  errorSummaryFocus();
  formsetsEnable();
  triggerInputsShow();
  document.getElementById("id_trigger")?.addEventListener("change", triggerInputsShow);
  paletteInputsShow();
  document.getElementById("id_palette_length")?.addEventListener("change", paletteInputsShow);
  previewFollowInput();
});
