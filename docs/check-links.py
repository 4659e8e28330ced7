#!/usr/bin/env python3
"""Every relative link and include in docs/src, README.md, ARCHITECTURE.md and CHANGELOG.md
resolves (the file, and the heading anchor when one is given). Run from the repository's root:
`python3 docs/check-links.py`. Citations of book pages from code comments
(`docs/src/…md#anchor`) are checked as well."""
import re, os, sys, glob
root = sys.argv[1] if len(sys.argv) > 1 else 'docs/src'
expected_elsewhere = set()
def slug(h):
    h = re.sub(r'<[^>]+>', '', h).strip().lower()
    h = re.sub(r'[^\w\- ]', '', h)
    return h.replace(' ', '-')
def anchors(path):
    out, fence = set(), False
    for line in open(path):
        if line.startswith('```'): fence = not fence
        if not fence:
            m = re.match(r'#{1,6} (.*?)\s*(\{#([\w-]+)\})?\s*$', line)
            if m: out.add(m.group(3) or slug(m.group(1)))
    return out
bad = 0
files = glob.glob(os.path.join(root, '**/*.md'), recursive=True)
files += [f for f in ('README.md', 'ARCHITECTURE.md', 'CHANGELOG.md') if os.path.exists(f)]
for f in files:
    text = open(f).read()
    text_nocode = re.sub(r'```.*?```', '', text, flags=re.S)
    text_nocode = re.sub(r'`[^`\n]*`', '', text_nocode)
    targets = re.findall(r'\]\(([^)\s]+)\)', text_nocode) + re.findall(r'\{\{#include ([^}\s]+)\}\}', text)
    for t in targets:
        if re.match(r'[a-z]+:', t): print(f'{f}: external link {t}'); bad += 1; continue
        path, _, frag = t.partition('#')
        full = os.path.normpath(os.path.join(os.path.dirname(f), path)) if path else f
        rel = os.path.relpath(full, 'docs/src')
        if not os.path.exists(full):
            if rel in expected_elsewhere: continue
            print(f'{f}: missing {t}'); bad += 1; continue
        if frag and full.endswith('.md') and frag not in anchors(full):
            print(f'{f}: no anchor #{frag} in {path or f}'); bad += 1
# Citations from code and scripts into the book (`docs/src/…md#anchor`) resolve too.
import subprocess
cited = subprocess.run(['git', 'grep', '-noE', r'docs/src/[A-Za-z0-9_/.-]+\.md(#[A-Za-z0-9_-]+)?'],
                       capture_output=True, text=True).stdout
for line in cited.splitlines():
    where, _, ref = line.rpartition(':')
    path, _, frag = ref.partition('#')
    if not os.path.exists(path):
        print(f'{where}: missing {ref}'); bad += 1
    elif frag and frag not in anchors(path):
        print(f'{where}: no anchor #{frag} in {path}'); bad += 1
print('broken:', bad); sys.exit(1 if bad else 0)
