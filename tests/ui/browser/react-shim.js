// The pinned React (UMD build, loaded by index.html) as the ES module page.js imports.
const React = window.React
export default React
export const { createElement, useEffect, useRef, useState } = React
