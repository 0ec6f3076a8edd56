package reportview

import (
	"strings"
	"unicode"
)

// A table is laid out in columns of the width of their widest cell, two spaces apart. A flex
// column (the last) is cut to the room left. Key columns (the names at the left) are narrowed
// when the row would not fit; a name longer than its column is never cut, because people copy
// it: it is written on a line of its own and the rest of its row follows on the next line.
type table struct {
	cols []column
	rows [][]cell
	// wide lays the table out as kubectl does: columns as wide as their widest cell, rows never
	// split nor narrowed; a row wider than the terminal wraps there.
	wide bool
}

type column struct {
	header string
	key    bool
	flex   bool
	// narrowGap lets the gap before the column shrink to one space when the row would not fit
	// otherwise; for columns of short numbers under long headers.
	narrowGap bool
}

type cell struct {
	text  string
	color string
}

func (t *table) write(b *strings.Builder, o Options) {
	width := o.width()
	for _, row := range t.rows {
		for i := range row {
			row[i].text = sanitize(row[i].text)
		}
	}
	widths := make([]int, len(t.cols))
	for i, c := range t.cols {
		widths[i] = displayWidth(c.header)
		for _, row := range t.rows {
			widths[i] = max(widths[i], displayWidth(row[i].text))
		}
	}
	// The flex column needs only minError to fit; it gets whatever room is left after that.
	flexNeed := func(i int) int { return min(widths[i], max(minError, displayWidth(t.cols[i].header))) }
	gaps := make([]int, len(t.cols)) // gaps[i] is the gap before column i
	for i := 1; i < len(gaps); i++ {
		gaps[i] = len(gap)
	}
	fixed := func() int {
		n := 0
		for i, w := range widths {
			n += gaps[i]
			if !t.cols[i].flex {
				n += w
			}
		}
		return n
	}
	total := func() int {
		n := fixed()
		for i, c := range t.cols {
			if c.flex {
				n += flexNeed(i)
			}
		}
		return n
	}
	if t.wide {
		width = max(width, total())
	}
	if total() > width {
		for i, c := range t.cols {
			if c.narrowGap {
				gaps[i] = 1
			}
		}
	}
	// Narrow the key columns, widest first, until the row fits or they reach minKey.
	for over := total() - width; over > 0; over = total() - width {
		widest := -1
		for i, c := range t.cols {
			if c.key && widths[i] > max(minKey, displayWidth(c.header)) && (widest < 0 || widths[i] > widths[widest]) {
				widest = i
			}
		}
		if widest < 0 {
			break
		}
		widths[widest] = max(widths[widest]-over, minKey, displayWidth(t.cols[widest].header))
	}
	for i, c := range t.cols {
		if c.flex {
			widths[i] = max(width-fixed(), displayWidth(c.header))
		}
	}

	header := make([]cell, len(t.cols))
	for i, c := range t.cols {
		header[i] = cell{text: c.header}
	}
	writeRow(b, t.cols, widths, gaps, header, false)
	for _, row := range t.rows {
		writeRow(b, t.cols, widths, gaps, row, o.Color)
	}
}

func writeRow(b *strings.Builder, cols []column, widths, gaps []int, row []cell, color bool) {
	var line strings.Builder
	split := false
	for i, c := range cols {
		if c.key && displayWidth(row[i].text) > widths[i] {
			split = true
		}
	}
	keys := 0
	if split {
		// The names in full, then the rest of the row under its headers.
		var names []string
		for i, c := range cols {
			if !c.key {
				break
			}
			names = append(names, row[i].text)
			keys++
		}
		b.WriteString(strings.Join(names, gap))
		b.WriteString("\n")
		for i := range keys {
			line.WriteString(strings.Repeat(" ", gaps[i]+widths[i]))
		}
	}
	for i := keys; i < len(cols); i++ {
		line.WriteString(strings.Repeat(" ", gaps[i]))
		text := row[i].text
		if cols[i].flex {
			text = truncateEnd(text, widths[i])
		}
		if color && row[i].color != "" && text != "" {
			line.WriteString(row[i].color + text + reset)
		} else {
			line.WriteString(text)
		}
		if i < len(cols)-1 {
			line.WriteString(strings.Repeat(" ", widths[i]-displayWidth(text)))
		}
	}
	b.WriteString(strings.TrimRight(line.String(), " "))
	b.WriteString("\n")
}

// writeWrapped writes text word-wrapped to width, the first line after prefix and the others
// after indent.
func writeWrapped(b *strings.Builder, text, prefix, indent string, width int) {
	line := prefix
	lineHasWord := false
	for _, word := range strings.Fields(text) {
		switch {
		case !lineHasWord:
		case displayWidth(line)+1+displayWidth(word) <= width:
			line += " "
		default:
			b.WriteString(line + "\n")
			line, lineHasWord = indent, false
		}
		if !lineHasWord {
			word = truncateEnd(word, width-displayWidth(line))
		}
		line += word
		lineHasWord = true
	}
	b.WriteString(line + "\n")
}

// sanitize makes text from the cluster safe and one line on a terminal: control characters
// (escape sequences included) and invisible format characters (bidi overrides) go, runs of
// white space become one space.
func sanitize(s string) string {
	var b strings.Builder
	space := false
	for _, r := range s {
		switch {
		case unicode.IsSpace(r) || unicode.IsControl(r):
			space = true
			continue
		case unicode.Is(unicode.Cf, r):
			continue
		}
		if space && b.Len() > 0 {
			b.WriteByte(' ')
		}
		space = false
		b.WriteRune(r)
	}
	return b.String()
}

// truncateEnd cuts s to at most w columns, marking the cut with "...".
func truncateEnd(s string, w int) string {
	if displayWidth(s) <= w {
		return s
	}
	if w <= len(ellipsis) {
		return ellipsis[:max(w, 0)]
	}
	var b strings.Builder
	used := 0
	for _, r := range s {
		rw := runeWidth(r)
		if used+rw > w-len(ellipsis) {
			break
		}
		b.WriteRune(r)
		used += rw
	}
	return b.String() + ellipsis
}

func displayWidth(s string) int {
	n := 0
	for _, r := range s {
		n += runeWidth(r)
	}
	return n
}

// runeWidth is 2 for the wide characters of East Asian scripts (messages from clusters may be in
// Korean, Chinese or Japanese) and 1 for everything else, which is close enough for a table.
func runeWidth(r rune) int {
	switch {
	case r >= 0x1100 && r <= 0x115F, // Hangul Jamo
		r >= 0x2E80 && r <= 0x303E, // CJK radicals, punctuation
		r >= 0x3041 && r <= 0x33FF, // Hiragana, Katakana, CJK compatibility
		r >= 0x3400 && r <= 0x4DBF, // CJK extension A
		r >= 0x4E00 && r <= 0x9FFF, // CJK unified ideographs
		r >= 0xA000 && r <= 0xA4CF, // Yi
		r >= 0xAC00 && r <= 0xD7A3, // Hangul syllables
		r >= 0xF900 && r <= 0xFAFF, // CJK compatibility ideographs
		r >= 0xFE30 && r <= 0xFE4F, // CJK compatibility forms
		r >= 0xFF00 && r <= 0xFF60, // fullwidth forms
		r >= 0xFFE0 && r <= 0xFFE6,
		r >= 0x1F300 && r <= 0x1F64F, // emoji
		r >= 0x20000 && r <= 0x3FFFD: // CJK extensions B and later
		return 2
	}
	return 1
}
