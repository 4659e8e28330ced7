//! Flame graph trees: Flink's `{name, value, children}` nodes from a root named `root`, built
//! from root-first stacks with their sample counts.

/// A node of a flame graph: a frame, how many samples passed through it, its callees.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FlameNode {
    /// The frame's name (`root` at the top).
    pub name: String,
    /// Samples whose stack passes through this frame.
    pub value: u64,
    /// Frames called from this one, one node per distinct name, most samples first.
    pub children: Vec<FlameNode>,
}

impl FlameNode {
    fn new(name: &str) -> FlameNode {
        FlameNode {
            name: name.to_string(),
            value: 0,
            children: Vec::new(),
        }
    }

    /// The tree of `stacks` (root-first frame names, sample count) under a node named `root`;
    /// callees ordered by samples (most first), then name.
    pub fn from_stacks<'a>(stacks: impl IntoIterator<Item = (&'a [String], u64)>) -> FlameNode {
        let mut root = FlameNode::new("root");
        for (stack, n) in stacks {
            if n == 0 {
                continue;
            }
            root.value += n;
            let mut node = &mut root;
            for frame in stack {
                let i = match node.children.iter().position(|c| &c.name == frame) {
                    Some(i) => i,
                    None => {
                        node.children.push(FlameNode::new(frame));
                        node.children.len() - 1
                    }
                };
                node = &mut node.children[i];
                node.value += n;
            }
        }
        root.sort();
        root
    }

    fn sort(&mut self) {
        self.children
            .sort_by(|a, b| b.value.cmp(&a.value).then_with(|| a.name.cmp(&b.name)));
        for c in &mut self.children {
            c.sort();
        }
    }

    /// Samples that ended in this node (its value minus its callees').
    pub fn self_value(&self) -> u64 {
        self.value
            .saturating_sub(self.children.iter().map(|c| c.value).sum())
    }

    /// Brendan Gregg's folded format: one `a;b;c count` line per leaf path (what `inferno`
    /// and `flamegraph.pl` read). The root itself is left out.
    pub fn folded(&self) -> String {
        let mut out = String::new();
        let mut path: Vec<&str> = Vec::new();
        for c in &self.children {
            c.fold_into(&mut path, &mut out);
        }
        out
    }

    fn fold_into<'a>(&'a self, path: &mut Vec<&'a str>, out: &mut String) {
        path.push(&self.name);
        let own = self.self_value();
        if own > 0 {
            // `;` separates frames in the folded format; a frame name must not contain one.
            let line: Vec<String> = path.iter().map(|f| f.replace(';', ":")).collect();
            out.push_str(&line.join(";"));
            out.push(' ');
            out.push_str(&own.to_string());
            out.push('\n');
        }
        for c in &self.children {
            c.fold_into(path, out);
        }
        path.pop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn stacks_merge_into_a_tree_and_fold_back() {
        let a = s(&["main", "work", "hash"]);
        let b = s(&["main", "work"]);
        let c = s(&["main", "io;read"]);
        let t = FlameNode::from_stacks([(&a[..], 3), (&b[..], 1), (&c[..], 2)]);
        assert_eq!(t.name, "root");
        assert_eq!(t.value, 6);
        assert_eq!(t.children[0].name, "main");
        assert_eq!(t.children[0].children[0].name, "work");
        assert_eq!(t.children[0].children[0].value, 4);
        assert_eq!(t.children[0].children[0].self_value(), 1);
        assert_eq!(
            t.folded(),
            "main;work 1\nmain;work;hash 3\nmain;io:read 2\n"
        );
    }
}
