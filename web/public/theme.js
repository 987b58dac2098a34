// Theme before first paint (no flash): stored choice, else the OS preference. A file of its own,
// loaded blocking from <head>: the server's Content-Security-Policy allows no inline script.
(function () {
  var t = null
  try { t = localStorage.getItem('trainwatch.theme') } catch (e) {}
  if (t !== 'light' && t !== 'dark') t = matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light'
  document.documentElement.setAttribute('data-theme', t)
})()
