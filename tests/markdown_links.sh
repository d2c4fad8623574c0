#!/usr/bin/env bash
# Every relative link in the project's Markdown resolves: the file or folder exists and,
# with a #fragment, the target has a heading of that anchor (GitHub's rule: lower case,
# punctuation dropped, spaces to hyphens). Links in fenced code blocks and inline code
# are not links. It checks the tracked files and the untracked ones git does not ignore.
#
#   tests/markdown_links.sh SOURCE_DIR
set -euo pipefail
export LC_ALL=C.UTF-8
root=${1:?usage: markdown_links.sh SOURCE_DIR}
cd "$root"

slug() { sed -e 's/.*/\L&/' -e 's/[^[:alnum:] _-]//g' -e 's/ /-/g'; }

# The anchors of a Markdown file, one per line (headings outside fenced code).
anchors() {
  awk '/^[[:space:]]*```/ { fenced = !fenced; next } !fenced && /^#+ / { sub(/^#+ +/, ""); print }' "$1" | slug
}

bad=0 checked=0
while IFS= read -r -d '' md; do
  [ -f "$md" ] || continue  # deleted, not yet committed
  dir=$(dirname "$md")
  # Links outside fenced code blocks, as "line<TAB>target".
  while IFS=$'\t' read -r line target; do
    case "$target" in http:* | https:* | mailto:*) continue ;; esac
    checked=$((checked + 1))
    path=${target%%#*}
    frag=""
    [[ "$target" == *"#"* ]] && frag=${target#*#}
    if [ -z "$path" ]; then file=$md; else file="$dir/$path"; fi
    if [ ! -e "$file" ]; then
      echo "$md:$line: link '$target': no file or folder $file" >&2
      bad=$((bad + 1))
      continue
    fi
    if [ -n "$frag" ]; then
      if [ -d "$file" ] || [[ "$file" != *.md ]]; then
        echo "$md:$line: link '$target': an anchor into something that is not a Markdown file" >&2
        bad=$((bad + 1))
      elif ! anchors "$file" | grep -qxF -- "$(printf '%s' "$frag" | slug)"; then
        echo "$md:$line: link '$target': $file has no heading with the anchor #$frag" >&2
        bad=$((bad + 1))
      fi
    fi
  done < <(awk '/^[[:space:]]*```/ { fenced = !fenced; next }
               !fenced { s = $0; gsub(/`[^`]*`/, "", s)
                 while (match(s, /\]\([^)[:space:]]+\)/)) {
                   print FNR "\t" substr(s, RSTART + 2, RLENGTH - 3); s = substr(s, RSTART + RLENGTH) } }' "$md")
done < <(git ls-files -z --cached --others --exclude-standard '*.md')

echo "markdown_links.sh: $checked relative links checked, $bad broken"
[ "$bad" -eq 0 ]
