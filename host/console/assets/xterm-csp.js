// xterm.js under the console's CSP, with nothing inline allowed: its DOM renderer writes its
// theme, cell metrics and cursor as <style> elements, and 256-colour and truecolor cells as `style`
// attributes, both of which `style-src 'self'` refuses (the text then draws in the default colour
// and the cursor not at all). Loaded on the terminal page only, before the terminal opens:
// - a <style> element gets the page's nonce (the terminal page's CSP allows style elements that
//   carry it; the nonce is read from this script's own tag, and is new on every response);
// - a `style` attribute is set through the CSSOM (`element.style.cssText`), which the CSP does not
//   govern: it can only ever style an element, never load or run anything.
const nonce = document.querySelector('script[data-style-nonce]')?.nonce ?? '';

const createElement = Document.prototype.createElement;
Document.prototype.createElement = function (tag, options) {
  const element = createElement.call(this, tag, options);
  if (String(tag).toLowerCase() === 'style') element.nonce = nonce;
  return element;
};

const setAttribute = Element.prototype.setAttribute;
Element.prototype.setAttribute = function (name, value) {
  if (String(name).toLowerCase() === 'style' && this.style !== undefined) this.style.cssText = String(value);
  else setAttribute.call(this, name, value);
};
