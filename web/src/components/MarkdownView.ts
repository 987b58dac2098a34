// Renders lib/markdown.ts's tree with render functions: every piece of the run's text becomes a text
// node (Vue escapes it), links get only the hrefs safeHref allowed and open in a new tab without
// access to this page. No innerHTML anywhere.
import { defineComponent, h, type PropType, type VNode } from 'vue'
import { parseMarkdown, type Block, type Inline } from '../lib/markdown'

function inline(nodes: Inline[]): (VNode | string)[] {
  return nodes.map((n) => {
    switch (n.t) {
      case 'text':
        return n.text
      case 'code':
        return h('code', n.text)
      case 'strong':
        return h('strong', inline(n.children))
      case 'em':
        return h('em', inline(n.children))
      case 'link':
        return h('a', { href: n.href, target: '_blank', rel: 'noopener noreferrer nofollow' }, inline(n.children))
    }
  })
}

function block(b: Block): VNode {
  switch (b.t) {
    case 'h':
      return h(`h${Math.min(6, b.level + 2)}`, inline(b.children))
    case 'p':
      return h('p', inline(b.children))
    case 'pre':
      return h('pre', h('code', b.text))
    case 'ul':
    case 'ol':
      return h(b.t, b.items.map((item) => h('li', inline(item))))
    case 'quote':
      return h('blockquote', inline(b.children))
    case 'table':
      return h('table', [
        h('thead', h('tr', b.head.map((c) => h('th', inline(c))))),
        h('tbody', b.rows.map((r) => h('tr', r.map((c) => h('td', inline(c)))))),
      ])
  }
}

export default defineComponent({
  name: 'MarkdownView',
  props: { source: { type: String as PropType<string>, required: true } },
  setup(props) {
    return () => h('div', { class: 'markdown' }, parseMarkdown(props.source).map(block))
  },
})
