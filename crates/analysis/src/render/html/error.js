// Errors of the page's script go into the page: the <html> element's
// data-error attribute and the #error box (a headless browser's dumped DOM
// shows them; so does the reader's screen).
(function () {
  'use strict';
  function report(message) {
    var root = document.documentElement;
    var text = String(message);
    var before = root.getAttribute('data-error');
    root.setAttribute('data-error', before ? before + ' | ' + text : text);
    function show() {
      var box = document.getElementById('error');
      if (box) {
        box.hidden = false;
        box.textContent += 'Error in this report: ' + text + '\n';
      }
    }
    if (document.readyState === 'loading') {
      document.addEventListener('DOMContentLoaded', show);
    } else {
      show();
    }
  }
  window.poolsimError = report;
  window.addEventListener('error', function (e) {
    report(e.message || 'an error');
  });
  window.addEventListener('unhandledrejection', function (e) {
    report(e.reason);
  });
})();
