#!/bin/sh
# Refresh the answer page's vendored renderer and sanitiser from npm (run from this folder).
# Change the versions here, run it, read the diff, and run the desk browser tests.
set -eu
MARKDOWN_IT=15.0.3
DOMPURIFY=3.4.18
# What markdown-it's browser bundle carries inside it (its package.json dependencies).
BUNDLED="linkify-it@6.1.0 mdurl@2.1.0 punycode.js@2.3.1 uc.micro@3.0.0 entities@8.1.0"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
here=$(pwd)
cd "$work"
npm pack --silent "markdown-it@$MARKDOWN_IT" "dompurify@$DOMPURIFY" $BUNDLED >/dev/null
for archive in *.tgz; do mkdir "${archive%.tgz}"; tar xzf "$archive" -C "${archive%.tgz}"; done
# The minified bundle has no banner: say what it is at its top.
{
  echo "/*! markdown-it $MARKDOWN_IT https://github.com/markdown-it/markdown-it @license MIT (LICENSE.markdown-it) */"
  cat "markdown-it-$MARKDOWN_IT/package/dist/browser/markdown-it.umd.min.js"
} >"$here/markdown-it.min.js"
cp "markdown-it-$MARKDOWN_IT/package/LICENSE" "$here/LICENSE.markdown-it"
cp "dompurify-$DOMPURIFY/package/dist/purify.min.js" "$here/purify.min.js"
cp "dompurify-$DOMPURIFY/package/LICENSE" "$here/LICENSE.dompurify"
cp "dompurify-$DOMPURIFY/package/LICENSE-MPL" "$here/LICENSE-MPL.dompurify"
for spec in $BUNDLED; do
  name=${spec%@*}
  cp "$(ls -d "$name-${spec##*@}"/package/LICENSE* | head -n 1)" "$here/LICENSE.$name"
done
sed -i '/^\/\/# sourceMappingURL=/d' "$here/markdown-it.min.js" "$here/purify.min.js"
echo "vendored markdown-it $MARKDOWN_IT and DOMPurify $DOMPURIFY"
