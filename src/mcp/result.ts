/**
 * A tool's result as the model reads it: its text, and a line for each item that is not text (an image, a
 * resource), with the structured content as JSON when there is no text. The caller bounds it like a
 * command's output.
 */
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js'

export function resultText(result: CallToolResult): string {
  const parts: string[] = []
  for (const item of result.content ?? []) {
    switch (item.type) {
      case 'text':
        parts.push(item.text)
        break
      case 'image':
      case 'audio':
        parts.push(
          `[${item.type}: ${item.mimeType}, ${item.data.length.toLocaleString('en-US')} characters of base64, not shown]`,
        )
        break
      case 'resource_link':
        parts.push(`[resource link: ${item.uri}${item.name ? ` (${item.name})` : ''}]`)
        break
      case 'resource': {
        const resource = item.resource as { uri: string; text?: string; blob?: string; mimeType?: string }
        parts.push(
          resource.text !== undefined
            ? `[resource ${resource.uri}]\n${resource.text}`
            : `[resource ${resource.uri}: ${resource.mimeType ?? 'binary'}, not shown]`,
        )
        break
      }
      default:
        parts.push(`[${(item as { type: string }).type} content, not shown]`)
    }
  }
  if (parts.length === 0 && result.structuredContent !== undefined)
    parts.push(JSON.stringify(result.structuredContent))
  return parts.join('\n')
}
