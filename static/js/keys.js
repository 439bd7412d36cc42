// API tokens and ingest keys (core/tokens.html, site/app_settings.html):
// - a form with data-confirm asks in a dialog before it is sent, then sends itself again with
//   confirm=1 (without JavaScript, the server answers the first POST with a confirmation page);
// - a button with data-copy="ID" copies the text of element ID (a secret shown once) to the
//   clipboard; it stays hidden where this script does not run.
var dialog = null, message = null, yes = null, onYes = null;

function makeDialog() {
  dialog = document.createElement("dialog");
  dialog.className = "confirm-dialog";
  dialog.setAttribute("aria-labelledby", "confirm-dialog-text");
  message = document.createElement("p");
  message.id = "confirm-dialog-text";
  var actions = document.createElement("div");
  actions.className = "dialog-actions";
  var no = document.createElement("button");
  no.type = "button";
  no.className = "secondary";
  no.textContent = "Cancel";
  no.addEventListener("click", function () { dialog.close(); });
  yes = document.createElement("button");
  yes.type = "button";
  yes.className = "danger";
  yes.addEventListener("click", function () {
    dialog.close();
    if (onYes) onYes();
  });
  actions.append(no, yes);
  dialog.append(message, actions);
  document.body.appendChild(dialog);
}

function ask(text, label, then) {
  if (!dialog) makeDialog();
  message.textContent = text;
  yes.textContent = label;
  onYes = then;
  dialog.showModal();
  yes.focus();
}

document.addEventListener("submit", function (event) {
  var form = event.target;
  if (!(form instanceof HTMLFormElement) || !form.dataset.confirm) return;
  if (form.querySelector("input[name=confirm]")) return;  // confirmed: let it go
  if (typeof HTMLDialogElement !== "function") return;  // the server's page asks instead
  event.preventDefault();
  var submitter = event.submitter || null;
  ask(form.dataset.confirm, form.dataset.confirmLabel || "Confirm", function () {
    var confirm = document.createElement("input");
    confirm.type = "hidden";
    confirm.name = "confirm";
    confirm.value = "1";
    form.appendChild(confirm);
    // requestSubmit sends the pressed button's name and value (revoke=<id>), as a click does.
    if (form.requestSubmit) form.requestSubmit(submitter);
    else form.submit();
  });
});

function selectText(element) {
  var selection = window.getSelection();
  selection.removeAllRanges();
  var range = document.createRange();
  range.selectNodeContents(element);
  selection.addRange(range);
}

document.querySelectorAll("button[data-copy]").forEach(function (button) {
  var source = document.getElementById(button.dataset.copy);
  if (!source) return;
  button.hidden = false;
  button.addEventListener("click", function () {
    var text = source.textContent.trim();
    function say(words) {
      button.textContent = words;
      setTimeout(function () { button.textContent = "Copy"; }, 2500);
    }
    function fallBack() {
      selectText(source);
      say("Selected: press Ctrl+C");
    }
    // The clipboard API needs a secure context (HTTPS or localhost).
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(function () { say("Copied"); }, fallBack);
    } else {
      fallBack();
    }
  });
});
