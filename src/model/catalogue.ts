/**
 * The tool catalogue as the model sees it: one JSON schema per tool of `src/tools/schemas.ts`, describing
 * the arguments the model may send (defaults optional), with the tool's description beside it.
 */
import type { JSONSchema7 } from 'ai'
import { z } from 'zod'
import { TOOL_NAMES, type ToolName, toolSchemas } from '../tools/index.js'
import { estimateTextTokens } from './fit.js'

export interface CatalogueEntry {
  description: string
  parameters: JSONSchema7
}

export const toolCatalogue: Readonly<Record<ToolName, CatalogueEntry>> = Object.fromEntries(
  TOOL_NAMES.map((name) => {
    const schema = toolSchemas[name]
    // The description travels beside the schema and `$schema` is noise to a model; both are dropped.
    const {
      $schema: _dialect,
      description: _description,
      ...parameters
    } = z.toJSONSchema(schema, {
      target: 'draft-7',
      io: 'input',
    }) as JSONSchema7
    return [name, { description: schema.description ?? name, parameters }]
  }),
) as Record<ToolName, CatalogueEntry>

/** What the catalogue costs in every request, as `fitTranscript` counts tokens. */
export const CATALOGUE_TOKENS = estimateTextTokens(JSON.stringify(toolCatalogue))
